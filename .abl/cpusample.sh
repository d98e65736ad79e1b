#!/bin/bash
# samples utime+stime (ticks) of every process by pid; prints per-comm max at the end
out=/tmp/cpusample.txt; : > $out
while [ ! -f /tmp/cpusample.stop ]; do
  for f in /proc/[0-9]*/stat; do read -r line < $f 2>/dev/null || continue; echo "$(date +%s.%N | cut -c1-14) $line"; done >> $out
  sleep 0.5
done
