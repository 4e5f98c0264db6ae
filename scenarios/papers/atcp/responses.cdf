# Response sizes of the fat-tree experiment of the ATCP paper ("small responses of size in
# [1KB, 10MB]"). The paper gives only the range; the shape follows the campus trace the
# paper measured (80% of the flows under 10 KB), restricted to 1 KB .. 10 MB:
# 80% < 10 KB, 90% < 100 KB, 95% < 1 MB. Mean (linear interpolation): 312,400 B.
# <size in bytes> <cumulative probability>
1000      0
10000     0.80
100000    0.90
1000000   0.95
10000000  1
