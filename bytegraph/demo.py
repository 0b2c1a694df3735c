"""The main job: run the seed examples through bytegraph and show each stage's output."""

import bytegraph


def main():
    print(f"bytegraph {bytegraph.__version__}: core loaded from {bytegraph._C.__file__}")
    return 0
