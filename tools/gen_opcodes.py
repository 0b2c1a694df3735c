"""Placeholder: replaced by the real generator (bytecode stage)."""
import sys, pathlib
p = pathlib.Path(sys.argv[1]); p.parent.mkdir(parents=True, exist_ok=True)
p.write_text("#pragma once\n")
