import json,sys,gzip
d=json.load(gzip.open(sys.argv[1]))
gpu=sys.argv[2] if len(sys.argv)>2 else 'H100 SXM'
for e in d:
  if 'variants' not in e: continue
  if '.bn' in e['layer'] or 'pool' in e['layer']: continue
  for v in e['variants']:
    for p in v['predicted']:
      if p['gpu']!=gpu: continue
      s=sum(p['seconds'])/2
      ks=' '.join('%s:%.1f(%s)'%(k['limiter'],sum(k['seconds'])/2e-6,'/'.join('%s=%.1f'%(n,sum(r)/2e-6) for n,r in k['limits'].items() if sum(r)/2e-6>0.3*sum(k['seconds'])/2e-6)) for k in p['kernels'])
      print('%-24s %-14s %6.1f us roof %5.1f %3.0f%% %s'%(e['layer'],v['variant'],s*1e6,p['roofline_seconds']*1e6,100*p['roofline_seconds']/s,ks))
