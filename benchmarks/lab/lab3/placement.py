# placement.py V12.cu OUT.cu NEW_NAME MODE: where the next step's fragment loads go among a step's FFMAs
# (at:R — after row R; ab:RB:RA — b after row RB, a after row RA; each:N — spread every N rows).
import sys, re
src, dst, name_out, mode = sys.argv[1:5]
s = open(src).read()
loadblk_start = s.index("                            if (step + 1 < 8 || k0 + 8 < BK) {")
ffma_start = s.index("                            #pragma unroll\n                            for (int i = 0; i < TM; ++i) {", loadblk_start)
ffma_end = s.index("                            }\n                        }\n                    }\n                }\n                tessera_async_commit();", ffma_start) + len("                            }\n")
load = s[loadblk_start:ffma_start]
ffma = s[ffma_start:ffma_end]
lines = load.split('\n')
cond, close = lines[0], '                            }'
a = [l for l in lines if 'a_frag[(step + 1)' in l]; b = [l for l in lines if 'b_frag[(step + 1)' in l]
def L(ls): return '\n'.join([cond] + ls + [close]) + '\n'
def rows(lo, hi): return ffma.replace("for (int i = 0; i < TM; ++i) {", f"for (int i = {lo}; i < {hi}; ++i) {{")
kind, *args = mode.split(':')
if kind == 'at':          # all loads after row r
    r = int(args[0]); body = rows(0, r) + L(a + b) + rows(r, 16)
elif kind == 'ab':        # b loads after row rb, a loads after row ra
    rb, ra = int(args[0]), int(args[1])
    parts = sorted([(rb, b), (ra, a)], key=lambda x: x[0])
    body = ''; prev = 0
    for r, ls in parts:
        body += rows(prev, r) + L(ls); prev = r
    body += rows(prev, 16)
elif kind == 'each':      # one load after every k rows, a then b
    step = int(args[0]); seq = a + b; body = ''; prev = 0; n = 16 // step
    per = -(-len(seq) // (n - 1)) if n > 1 else len(seq)
    chunks = [seq[i:i+per] for i in range(0, len(seq), per)]
    for c_i in range(n):
        body += rows(prev, prev + step); prev += step
        if c_i < len(chunks): body += L(chunks[c_i])
s = s[:loadblk_start] + body + s[ffma_end:]
s = s.replace('\nsgemm_v12(', f'\n{name_out}(')
open(dst, 'w').write(s)
