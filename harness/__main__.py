import sys

from hourglass.harness.cli import main

sys.exit(main())
