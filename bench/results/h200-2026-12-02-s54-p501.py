#!/usr/bin/env python3
"""Session 54 diagnostic: dg_diff's emitted module with its epilogue's stores moved to one array of
rows of 501 (ur at column 0, us at 168, ut at 336; the row pitch odd like 165, so the odd-row pair
logic sees the same parities): is the three-array address pattern or the code what costs?"""
import re, sys
src = open(sys.argv[1]).read().split('\n')
out, n = [], 0
for line in src:
    if '__stcs' in line or 'chunk_array' in line or re.search(r'float\* to_\d+ = ', line):
        line, k = re.subn(r'\b(m(?:_\d+)?) \* 165 \+', r'\1 * 501 +', line)
        n += k
    out.append(line)
open(sys.argv[2], 'w').write('\n'.join(out))
print('replaced', n)
