"""Run by the bootstrap scripts with the new venv's Python: the installed pyspark must match its
Spark jars (pyspark-client installs into the same folder), and Airflow must be the expected line.

    python scripts/check_install.py [AIRFLOW_MAJOR.MINOR]"""

import glob
import os
import sys

import pyspark

jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core_*.jar"))
jar_version = os.path.basename(jars[0]).rsplit("-", 1)[1].removesuffix(".jar") if jars else "missing"
if pyspark.__version__ != jar_version:
    raise SystemExit(
        f"zipper setup: pyspark {pyspark.__version__} but Spark jars {jar_version}: "
        "pyspark and pyspark-client must be pinned to the same version"
    )
if len(sys.argv) > 1:
    import airflow

    if not airflow.__version__.startswith(sys.argv[1] + "."):
        raise SystemExit(f"zipper setup: expected Airflow {sys.argv[1]} in {sys.prefix}, found {airflow.__version__}")
