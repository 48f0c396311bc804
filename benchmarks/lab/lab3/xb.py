# xb.py V12.cu OUT.cu sgemm_v12 NEW_NAME: the barrier and the next tile's first fragment loads
# moved into the last k-step of each tile (as CUTLASS's multistage mainloop does).
import sys, re
s = open(sys.argv[1]).read()
name_in, name_out = sys.argv[3], sys.argv[4]
s = s.replace(f"\n{name_in}(", f"\n{name_out}(")
lines = s.split('\n')
def find(pred, start=0):
    for i in range(start, len(lines)):
        if pred(lines[i]): return i
    raise Exception('not found')
kloop = find(lambda l: 'for (int k = k_first; k < k_tiles; ++k) {' in l)
w = find(lambda l: 'tessera_async_wait<STAGES - 2>();' in l, kloop)
assert lines[w+1].strip() == '__syncthreads();'
fa = find(lambda l: 'float a_frag[2][TM];' in l, kloop)
# initial loads: the 6 lines after the two decls
init = lines[fa+2:fa+2+6]
assert all('[0][' in l for l in init), init
ind = lines[kloop][:len(lines[kloop]) - len(lines[kloop].lstrip())]
pre = [ind + 'float a_frag[2][TM];', ind + 'float b_frag[2][TN];',
       ind + 'tessera_async_wait<STAGES - 2>();', ind + '__syncthreads();',
       ind + 'if (k_first < k_tiles) {'] + [ind + '    ' + l.strip().replace('[stage][0]', '[0][0]') for l in init] + [ind + '}']
# the step-loop conditional
c = find(lambda l: 'if (step + 1 < 8 || k0 + 8 < BK) {' in l, fa)
loads = lines[c+1:c+7]
cind = lines[c][:len(lines[c]) - len(lines[c].lstrip())]
els = [cind + '} else {',
       cind + '    // the last step of tile k: tile k + 1 has landed; load its first step while this one multiplies',
       cind + '    tessera_async_commit();',
       cind + '    tessera_async_wait<STAGES - 2>();',
       cind + '    __syncthreads();',
       cind + '    if (k + 1 < k_tiles) {',
       cind + '        const int next_stage = (k + 1 - k_first) % STAGES;'] + \
      [cind + '        ' + l.strip().replace('[stage][kk + 1]', '[next_stage][0]') for l in loads] + [cind + '    }']
assert lines[c+7].strip() == '}'
lines[c+7:c+7] = els
# remove the commit after the mma block
cm = find(lambda l: l.strip() == 'tessera_async_commit();', c + 20)
del lines[cm]
# remove frag decls + init loads
del lines[fa:fa+8]
# remove wait+sync at loop top
del lines[w:w+2]
lines[kloop:kloop] = pre
open(sys.argv[2], 'w').write('\n'.join(lines))
