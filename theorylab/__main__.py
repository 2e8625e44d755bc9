"""``python -m theorylab ARGS`` is ``theorylab ARGS``: the console script's function, :func:`verify.cli.main`."""
import sys

from verify.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
