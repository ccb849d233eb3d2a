import sys

from playprm.cli import main

sys.exit(main())
