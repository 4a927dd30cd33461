import re, sys, glob
def load(f):
    return [(int(l.split(' ',1)[0],16), l.rstrip('\n').split(' ',1)[1]) for l in open(f)]
for d in sys.argv[1:]:
  for f in sorted(glob.glob('/tmp/fcp/sass/%s/*.addr'%d)):
    ops=load(f)
    loops=[]
    for a,t in ops:
        m=re.search(r'BRA.*0x([0-9a-f]+)',t)
        if m:
            tgt=int(m.group(1),16)
            if tgt<a:
                body=[(x,y) for x,y in ops if tgt<=x<=a]
                n=sum('HGMMA' in y for _,y in body)
                if n>=16: loops.append((len(body),body,n))
    if not loops: print(f, 'no loop'); continue
    L,body,n=min(loops, key=lambda x:x[0])
    pos=lambda pred: next((i for i,(a,t) in enumerate(body) if pred(t)),None)
    dep0=pos(lambda t:'DEPBAR.LE gsb0, 0x0' in t)
    r2ur=sum(t.startswith('R2UR') for _,t in body)
    print(d, f.split('/')[-1][:45], 'static', L, 'R2UR', r2ur, 'PV wait at', dep0, 'first FMNMX', pos(lambda t:t.startswith('FMNMX')), 'EX2 before wait', sum('MUFU.EX2' in t for _,t in body[:dep0]))
