"""How long Airflow takes to parse the zipper DAG file with N table specs (default 200), side by
side with a DAG file holding one trivial DAG, the way the dag processor parses: a DagBag over
one file, in a process that already imported Airflow and the DAG file's modules
(`[dag_processor] parsing_pre_import_modules`, on by default). Also the cold parse (a fresh
process), for scale.

    .venv/bin/python bench/bench_parse.py [--specs 200] [--repeats 5]

Prints each sample, the medians, the ratio, and a last machine-readable RESULT line."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TRIVIAL_DAG = """
import datetime as dt
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator

with DAG("trivial", schedule="@daily", start_date=dt.datetime(2024, 1, 1), catchup=False, tags=["bench"]):
    EmptyOperator(task_id="noop")
"""


def write_specs(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"table_{i:04d}"
        spec = {
            "name": name,
            "table": f"dw.{name}",
            "keys": ["id"],
            "source": {"format": "parquet", "path": f"/data/ods/{name}/ds={{{{ ds }}}}"},
            "base": {"format": "parquet", "path": f"/data/ods/{name}_base"},
            "start_date": "2024-01-01",
            "description": f"benchmark table {i}",
            "airflow": {"owner": "data-eng", "tags": ["bench"]},
        }
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def dagbag(path: Path):
    try:
        from airflow.dag_processing.dagbag import DagBag

        return DagBag(dag_folder=str(path))
    except ImportError:  # Airflow 2.11
        from airflow.models.dagbag import DagBag

        return DagBag(dag_folder=str(path), include_examples=False)


def warm(path: Path, repeats: int) -> tuple[list[float], int]:
    samples, count = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        bag = dagbag(path)
        samples.append(time.perf_counter() - started)
        count = len(bag.dag_ids)
        assert not bag.import_errors, bag.import_errors
    return samples, count


def cold(path: Path, env: dict) -> float:
    code = (
        f"import time; t = time.perf_counter(); import sys; sys.path.insert(0, {str(REPO)!r});"
        f" from bench.bench_parse import dagbag; from pathlib import Path; dagbag(Path({str(path)!r}));"
        " print('SECONDS', time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    return float([x for x in out.splitlines() if x.startswith("SECONDS")][0].split()[1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="zipper-bench-parse-") as tmp:
        tmp = Path(tmp)
        write_specs(tmp / "specs", args.specs)
        (tmp / "trivial_dag.py").write_text(TRIVIAL_DAG)
        os.environ.update(
            {
                "AIRFLOW_HOME": str(tmp / "airflow"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "ZIPPER_SPECS": str(tmp / "specs"),
            }
        )
        import zipper.airflow.dag_builder  # noqa: F401  (pre-imported, as the dag processor does)

        zipper_file = REPO / "dags" / "zipper_dags.py"
        dagbag(tmp / "trivial_dag.py"), dagbag(zipper_file)  # warm-up, untimed
        trivial, zipper = [], []
        dags = 0
        for _ in range(args.repeats):  # alternate, so both see the same machine load
            t, _ = warm(tmp / "trivial_dag.py", 1)
            z, dags = warm(zipper_file, 1)
            trivial += t
            zipper += z
        cold_zipper = cold(zipper_file, dict(os.environ))
        cold_trivial = cold(tmp / "trivial_dag.py", dict(os.environ))

    med_z, med_t = statistics.median(zipper), statistics.median(trivial)
    print(f"zipper_dags.py, {args.specs} specs -> {dags} DAGs: " + " ".join(f"{s:.3f}" for s in zipper) + " s")
    print("one trivial DAG file:            " + " ".join(f"{s:.3f}" for s in trivial) + " s")
    print(
        f"median {med_z:.3f} s vs {med_t:.3f} s; ratio {med_z / med_t:.0f}x;"
        f" per spec {1000 * med_z / args.specs:.2f} ms"
    )
    print(f"cold (fresh process, imports included): zipper {cold_zipper:.2f} s, trivial {cold_trivial:.2f} s")
    print(
        "RESULT "
        + json.dumps(
            {
                "specs": args.specs,
                "dags": dags,
                "zipper_s": round(med_z, 3),
                "trivial_s": round(med_t, 4),
                "ratio": round(med_z / med_t, 1),
                "cold_zipper_s": round(cold_zipper, 2),
                "cold_trivial_s": round(cold_trivial, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
