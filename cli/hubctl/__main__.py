import sys

from hubctl.main import main

sys.exit(main())
