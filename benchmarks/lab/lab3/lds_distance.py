# lds_distance.py KERNEL.sass: instructions between each LDS and the first FFMA that reads
# what it loaded, in the innermost FFMA loop (short distances leave shared-memory latency exposed).
import re, sys, collections
# usage: ldsdist.py file.sass  -> for the hottest FFMA loop: LDS->first-use distances
ins=[]
for line in open(sys.argv[1]):
    m = re.match(r'\s+/\*([0-9a-f]+)\*/\s+(.*?);', line)
    if m: ins.append((int(m.group(1),16), m.group(2)))
loops=[]
for i,(a,s) in enumerate(ins):
    m=re.search(r'BRA (?:\S+, )?0x([0-9a-f]+)', s)
    if m and int(m.group(1),16) < a:
        lo=int(m.group(1),16)
        body=[x for x in ins if lo<=x[0]<=a]
        nf=sum(1 for x in body if ' FFMA' in ' '+x[1] and x[1].split()[0] in ('FFMA',) or x[1].startswith('FFMA'))
        loops.append((nf, -len(body), lo, a, body))
loops=[l for l in loops if l[0]>=512]; loops.sort(key=lambda l:-l[1])
nf,_,lo,hi,body=loops[0]
print(f"loop {lo:#x}-{hi:#x}: {len(body)} instructions, {nf} FFMA")
def regs(op):
    out=set()
    for r in re.findall(r'R(\d+)', op):
        out.add(int(r))
    return out
pending={}  # reg -> index of LDS writing it
dists=[]
for idx,(a,s) in enumerate(body+body):  # twice for loop-carried
    t=s.split()
    op=t[1] if t[0].startswith('@') else t[0]
    args=' '.join(t[2:] if t[0].startswith('@') else t[1:])
    parts=[p.strip() for p in args.split(',')]
    if op.startswith('LDS') and 'RZ' not in parts[0]:
        base=int(parts[0][1:]); w=4 if '.128' in op else (2 if '.64' in op else 1)
        for r in range(base,base+w): pending[r]=idx
        continue
    if op=='FFMA':
        srcs=regs(','.join(parts[1:]))
        d=[idx-pending[r] for r in srcs if r in pending]
        if d and idx>=len(body):
            dists.append((min(d), a))
        for r in srcs: pending.pop(r,None)
c=collections.Counter()
for d,a in dists:
    c[min(d//8*8,64)]+=1
print("LDS->first FFMA use distance (instructions), histogram:", sorted(c.items()))
print("uses closer than 24:", sum(1 for d,a in dists if d<24), " closer than 12:", sum(1 for d,a in dists if d<12))
