"""`python3 -m lab COMMAND`: the lab's CLI (lab/cli.py)."""

from lab.cli import main

raise SystemExit(main())
