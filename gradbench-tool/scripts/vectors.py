#!/usr/bin/env python3
"""Runs the GradBench tool on the workloads of vector files, as the eval would send them.

    python3 gradbench-tool/scripts/vectors.py [--tool PATH] [--messages] FILE...

For each file (gradbench-tool/vectors/*.json) it sends start, define and, per workload, the
primal and derivative evaluate messages (with min_seconds 0 and min_runs 1 unless --timed),
then prints, per response, the largest difference from the reference relative to the
reference's largest entry (against rk4_float64_output where the file has it) and the mean
time of the runs. --messages only prints the message lines, to pipe into the tool by hand.
"""
import argparse
import json
import subprocess
import sys


def messages(vectors, timed):
    module = vectors["module"]
    lines = [{"id": 0, "kind": "start", "eval": vectors["eval"]},
             {"id": 1, "kind": "define", "module": module}]
    for w in vectors["workloads"]:
        payload = dict(w["input"])
        if not timed:
            payload["min_runs"], payload["min_seconds"] = 1, 0
        for part in ("primal", "derivative"):
            lines.append({"id": len(lines), "kind": "evaluate", "module": module,
                          "function": w[part]["function"], "input": payload,
                          "description": w["description"]})
    return lines


def numbers(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in numbers(v[k])]
    if isinstance(v, list):
        return [x for e in v for x in numbers(e)]
    return [v]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", default="target/release/rune-gradbench")
    parser.add_argument("--messages", action="store_true")
    parser.add_argument("--timed", action="store_true", help="keep the files' timing controls")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    for path in args.files:
        with open(path) as f:
            vectors = json.load(f)
        sent = messages(vectors, args.timed)
        text = "".join(json.dumps(m) + "\n" for m in sent)
        if args.messages:
            sys.stdout.write(text)
            continue
        run = subprocess.run([args.tool], input=text, capture_output=True, text=True, check=True)
        responses = [json.loads(line) for line in run.stdout.splitlines()]
        index = 2
        for w in vectors["workloads"]:
            for part in ("primal", "derivative"):
                response = responses[index]
                index += 1
                name = f"{path.split('/')[-1]} {w['description']} {w[part]['function']}"
                if not response.get("success"):
                    print(f"{name}: failed: {response.get('error')}")
                    continue
                reference = w[part].get("rk4_float64_output", w[part]["expected_output"])
                ours, theirs = numbers(response["output"]), numbers(reference)
                if len(ours) != len(theirs):
                    print(f"{name}: {len(ours)} numbers, the reference has {len(theirs)}")
                    continue
                scale = max(abs(b) for b in theirs) or 1.0
                error = max(abs(a - b) for a, b in zip(ours, theirs)) / scale
                times = [t["nanoseconds"] for t in response["timings"]]
                mean_ms = sum(times) / len(times) / 1e6
                print(f"{name}: relative error {error:.1e}, {mean_ms:.4f} ms ({len(times)} runs)")


if __name__ == "__main__":
    main()
