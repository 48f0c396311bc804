# order.py V12.cu OUT.cu sgemm_v12 NEW_NAME ORDER: V12 with another FFMA order in its mma
# (jo: columns outer; jo4: columns outer in halves; plain: rows outer, no serpentine).
import sys
src, dst, name_in, name_out, order = sys.argv[1:6]
s = open(src).read()
old = """                            for (int i = 0; i < TM; ++i) {
                                #pragma unroll
                                for (int jj = 0; jj < TN; ++jj) {
                                    // serpentine: odd rows run right to left, so each row change reuses a b value
                                    const int j = i % 2 == 0 ? jj : TN - 1 - jj;
                                    acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                                }
                            }"""
assert old in s
if order == 'jo':
    new = """                            for (int j = 0; j < TN; ++j) {
                                #pragma unroll
                                for (int ii = 0; ii < TM; ++ii) {
                                    const int i = j % 2 == 0 ? ii : TM - 1 - ii;
                                    acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                                }
                            }"""
elif order == 'jo4':  # j outer in halves of TM
    new = """                            for (int h = 0; h < 2; ++h) {
                                #pragma unroll
                                for (int j = 0; j < TN; ++j) {
                                    #pragma unroll
                                    for (int ii = 0; ii < TM / 2; ++ii) {
                                        const int i = h * (TM / 2) + (j % 2 == 0 ? ii : TM / 2 - 1 - ii);
                                        acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                                    }
                                }
                            }"""
elif order == 'plain':
    new = """                            for (int i = 0; i < TM; ++i) {
                                #pragma unroll
                                for (int j = 0; j < TN; ++j) {
                                    acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                                }
                            }"""
s = s.replace(old, new).replace(f'\n{name_in}(', f'\n{name_out}(')
open(dst, 'w').write(s)
