#!/bin/bash
# The file system of the sample Bash tasks (data/intercode/bash_tasks.jsonl),
# written for this project in the shape of InterCode's NL2Bash setup scripts.
rm -rf /testbed
mkdir -p /testbed/logs /testbed/src/util /testbed/docs /testbed/tmp
printf 'INFO start\nERROR disk full\nINFO retry\nERROR disk full\nWARN slow\n' > /testbed/logs/app.log
printf 'INFO ok\n' > /testbed/logs/old.log
printf 'def main():\n    print("hi")\n' > /testbed/src/main.py
printf 'def helper():\n    return 1\n' > /testbed/src/util/helper.py
printf '# Notes\nTODO: write docs\n' > /testbed/docs/notes.md
printf 'scratch\n' > /testbed/tmp/a.tmp
printf 'scratch\n' > /testbed/tmp/b.tmp
