# The two commands: `make demo` and `make test`. Both create or reuse .venv.
.PHONY: setup demo test bench clean

setup:
	@scripts/bootstrap.sh

demo: setup
	.venv/bin/python -m zipper.demo

test:
	scripts/test.sh

bench: setup
	.venv/bin/python bench/bench_merge.py

clean:
	rm -rf warehouse demo_data
