"""Entry point of ``python -m mdpviz``."""

import sys

from .cli import main, quiet_stdout

try:
    code = main()
    sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's own last flush
except BrokenPipeError:  # `python -m mdpviz mechanisms | head -1`: the reader went away; stop quietly
    quiet_stdout()
    code = 128 + 13
raise SystemExit(code)
