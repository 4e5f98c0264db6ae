//! Files a scenario names (traces, size distributions), found beside the scenario file.

/// A path in a scenario resolved against the scenario file's directory.
pub(crate) fn relative_to(scenario_file: &str, name: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(name);
    if p.is_absolute() || scenario_file.starts_with('<') {
        return p.to_path_buf();
    }
    match std::path::Path::new(scenario_file).parent() {
        Some(dir) => dir.join(p),
        None => p.to_path_buf(),
    }
}
