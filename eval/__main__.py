"""python3 -m eval: the evaluation (see eval/experiments.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiments import main  # noqa: E402

main()
