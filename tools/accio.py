#!/usr/bin/env python3
"""accio: build, boot and drive the emulated Accio SoC (python3 tools/accio.py
--help). The code is the package beside this file, tools/accio/; its
command line is accio/cli.py. `import accio` with tools/ on sys.path finds
the package, never this file (a folder with __init__.py comes before a
module of the same name in the same folder)."""
import sys

from accio.cli import main

if __name__ == "__main__":
    sys.exit(main())
