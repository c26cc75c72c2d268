#!/usr/bin/env python3
"""Makes a vector file (gradbench-tool/vectors/*.json) from a `gradbench run -o LOG` log.

    python3 gradbench-tool/scripts/vectors_from_log.py LOG --eval-command CMD --note TEXT \
        [--default-workloads] -o OUT.json

The log is a run of the eval against GradBench's `manual` tool (the golden C++ tool, whose
answers the eval validates against). Each workload (one `description`) becomes one entry with
its exact input and the tool's answers: the first function evaluated on it (`primal` or
`objective`) as "primal", the second (`gradient`, `jacobian`) as "derivative". A workload is
kept only when the eval marked both answers valid.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--eval-command", required=True)
    parser.add_argument("--note", required=True)
    parser.add_argument("--default-workloads", action="store_true")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    messages, responses, valid = {}, {}, {}
    start = None
    with open(args.log) as f:
        for line in f:
            entry = json.loads(line)
            if "message" in entry:
                m = entry["message"]
                messages[m["id"]] = m
                if m["kind"] == "start":
                    start = m
                elif m["kind"] == "analysis":
                    valid[m["of"]] = m.get("valid", False)
            elif "response" in entry:
                responses[entry["response"]["id"]] = entry["response"]
    if start is None:
        sys.exit(f"{args.log}: no start message")

    workloads, order = {}, []
    for id_, m in sorted(messages.items()):
        if m["kind"] != "evaluate":
            continue
        r = responses.get(id_)
        if r is None or not r.get("success") or not valid.get(id_, False):
            sys.exit(f"{args.log}: evaluate {id_} ({m['description']}) has no valid answer")
        d = m["description"]
        if d not in workloads:
            workloads[d] = {"description": d, "input": m["input"]}
            order.append(d)
        w = workloads[d]
        part = "primal" if "primal" not in w else "derivative"
        if part == "derivative" and "derivative" in w:
            sys.exit(f"{args.log}: workload {d} has more than two functions")
        w[part] = {"function": m["function"], "expected_output": r["output"]}

    vectors = {
        "eval": start["eval"],
        "module": next(m["module"] for m in messages.values() if m["kind"] == "define"),
        "eval_command": args.eval_command,
        "default_workloads": args.default_workloads,
        "start_message": start,
        "note": args.note,
        "workloads": [workloads[d] for d in order],
    }
    with open(args.output, "w") as f:
        json.dump(vectors, f)
        f.write("\n")


if __name__ == "__main__":
    main()
