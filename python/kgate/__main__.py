"""python3 -m kgate COMMAND ...: the commands the Python side implements.

    python3 -m kgate kernelbench PROBLEM.py SOLUTION.py [--json F] [--compile]
    python3 -m kgate kernelbench PROBLEMS_DIR SOLUTIONS_DIR [...]

`kgate kernelbench ...` runs the same (the CLI hands it here)."""
import sys


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(__doc__)
        return 0
    if argv[0] == "kernelbench":
        from .kernelbench import main as kb
        return kb(argv[1:])
    sys.stderr.write(f"kgate: unknown Python command '{argv[0]}' (kernelbench)\n")
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
