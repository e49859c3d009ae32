import sys

from hourglass.reports.cli import main

sys.exit(main())
