import sys, runpy
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-29-pace")
import ab
from specx.policy import costmodel
import trees, specx
costmodel.CostModel.pace, trees.run_one, specx.load = ab.pace, ab.run, ab.loading
sys.argv[1:1] = ["-c", f"old={ab.D},old=1", "-c", f"new={ab.D}"]
sys.exit(ab.session_ab.main())
