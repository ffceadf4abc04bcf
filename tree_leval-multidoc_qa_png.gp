if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 800,480 font ',10' } else { set terminal png size 800,480 }
set termoption noenhanced
set output '/work/wt-tree2/tree_leval-multidoc_qa.png'
set title "leval-multidoc_qa: tokens recomputed vs state memory (B = 64 tokens, 10000 requests)"
set grid
set logscale x 2
set key outside right
set xlabel "state memory (GiB)"
set ylabel "tokens recomputed (millions)"
set yrange [0:*]
plot '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 0 using 1:2 with linespoints lw 2 title 'hybridcache', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 1 using 1:2 with linespoints lw 2 title 'hybridcache_nofill', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 2 using 1:2 with linespoints lw 2 title 'vllm_align', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 3 using 1:2 with linespoints lw 2 title 'vllm_all', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 4 using 1:2 with linespoints lw 2 title 'sglang_no_buffer', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 5 using 1:2 with linespoints lw 2 title 'sglang_extra_buffer', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 6 using 1:2 with linespoints lw 2 title 'sglang_extra_buffer_cap4', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 7 using 1:2 with linespoints lw 2 title 'marconi', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 8 using 1:2 with linespoints lw 2 title 'llamacpp', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 9 using 1:2 with linespoints lw 3 title 'oracle', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 10 using 1:2 with linespoints lw 3 title 'oracle_exact', \
     '/work/wt-tree2/tree_leval-multidoc_qa.dat' index 11 using 1:2 with linespoints lw 3 title 'static_optimum'
