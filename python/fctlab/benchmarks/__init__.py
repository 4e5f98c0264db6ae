"""Fixed benchmark scenarios shipped with the package (see ``fctlab bench``)."""
