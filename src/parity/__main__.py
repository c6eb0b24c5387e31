"""``python -m parity`` runs the command line."""

from parity.cli.main import main

if __name__ == "__main__":
    main()
