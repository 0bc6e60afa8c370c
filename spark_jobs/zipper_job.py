"""spark-submit entry point: the same code and arguments as the `zipper` CLI.

spark-submit spark_jobs/zipper_job.py merge dim_user --ds 2024-01-05
"""

import sys

from zipper.cli.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
