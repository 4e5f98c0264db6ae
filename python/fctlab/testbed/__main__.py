import sys

from . import main_testbed

sys.exit(main_testbed())
