"""``python -m hourglass``: the harness's command line (``hourglass.harness.cli``)."""

import sys

from hourglass.harness.cli import main

sys.exit(main())
