"""The argument parser shared by fctlab's commands: a usage error is one line and exit 2."""

import argparse


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")
