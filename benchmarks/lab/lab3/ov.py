# ov.py V12.cu OUT.cu sgemm_v12 NEW_NAME: the next unit's pipeline prologue issued before this
# unit's epilogue (its first tiles travel while the epilogue stores).
import sys
src, dst, name_in, name_out = sys.argv[1:5]
L = open(src).read().split('\n')
def idx(pred, start=0):
    for i in range(start, len(L)):
        if pred(L[i]): return i
    raise Exception('nf')
fl = idx(lambda l: l.strip() == 'for (;;) {')
sched = L[fl+1: idx(lambda l: 'const int tile = stream_k[SK_TILE];' in l, fl)]
rd0 = idx(lambda l: 'const int tile = stream_k[SK_TILE];' in l, fl)
rd1 = idx(lambda l: 'const int by = tile / tiles_x;' in l, rd0)
read = L[rd0:rd1+1]
pb = idx(lambda l: l.strip() == 'constexpr int STAGES = 3;', rd1) - 1  # the '{' line
pro0 = idx(lambda l: '// prologue: the first STAGES - 1' in l, pb)
kl = idx(lambda l: 'for (int k = k_first; k < k_tiles; ++k) {' in l, pro0)
decl = L[pb+1:pro0]      # STAGES, k_first, k_tiles, first rows...
prologue = L[pro0:kl]
ep0 = idx(lambda l: 'under stream-K: a tile whose whole k loop ran here' in l, kl)
end = len(L) - 1
while L[end].strip() != '}': end -= 1
# end = kernel's closing brace; the for(;;) closes at end-1
assert L[end-1].strip() == '}'
pipeline_rest = L[kl:ep0]
epilogue = L[ep0:end-1]
def next_prologue(ind='        '):
    out = [ind + '{',
           ind + '    // the next unit\'s first tiles travel while this one\'s epilogue runs',
           ind + '    const int tile = stream_k[SK_TILE];',
           ind + '    if (tile >= 0) {']
    out += ["    " + l for l in read[4:]]   # k_begin, k_end, tiles_x, bx, by
    out += ['    ' + l for l in decl] + ['    ' + l for l in prologue]
    out += [ind + '    }', ind + '}']
    return out
new = L[:fl]
new += [l[4:] if l.startswith('    ') else l for l in sched]   # first schedule, outside the loop
new += [l[4:] for l in next_prologue()]
new += ['    for (;;) {']
new += read
new += L[rd1+1:pb+1]   # acc decl etc. and the pipeline block '{'
new += decl
new += pipeline_rest
new += sched
new += next_prologue()
new += epilogue
new += L[end-1:]
s = '\n'.join(new).replace(f'\n{name_in}(', f'\n{name_out}(')
open(dst, 'w').write(s)
