"""The lab's own modules (lab/), for tests that render the lab's fixtures or talk to its control plane."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab"))
