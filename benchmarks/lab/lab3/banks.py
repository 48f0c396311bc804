# banks.py KERNEL.sass: in the innermost FFMA loop (>= 1000 FFMAs, shortest body), the FFMAs
# that read two registers of the same bank (R % 2) that the operand reuse cache does not hold.
# The model is simple (two banks, reuse flags of the previous FFMA only) but it ranked four
# FFMA orders of V12 exactly as the GPU timed them (BENCHMARKS.md, issue 5, 2026-11-22 evening).
import re, sys
ins=[]
for line in open(sys.argv[1]):
    m = re.match(r'\s+/\*([0-9a-f]+)\*/\s+(.*?);', line)
    if m: ins.append((int(m.group(1),16), m.group(2)))
best=None
for a,s in ins:
    m=re.search(r'BRA (?:\S+, )?0x([0-9a-f]+)', s)
    if m and int(m.group(1),16) < a:
        body=[x[1] for x in ins if int(m.group(1),16)<=x[0]<=a]
        nf=sum(1 for x in body if x.startswith('FFMA'))
        if nf>=1000 and (best is None or len(body)<len(best)): best=body
conf=0; n=0; prev={}
for s in best:
    if not s.startswith('FFMA'): prev={}; continue
    n+=1
    srcs=[o.strip() for o in s[4:].split(',')][1:]
    regs=[int(re.match(r'R(\d+)',o).group(1)) for o in srcs]
    live=[r for i,r in enumerate(regs) if prev.get(i)!=r]
    prev={i:regs[i] for i,o in enumerate(srcs) if '.reuse' in o}
    b=[r%2 for r in live]
    if len(b)-len(set(b))>=1: conf+=1
print(f"{sys.argv[1]}: {len(best)} instr, {n} FFMA, same-bank FFMAs {conf}")
