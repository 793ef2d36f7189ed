package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I./include" -type record -type counters -type config -type lpm_key -type port_bits flowmon capture.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I./include" -type flow_cell -type flow_event -type flow_state -type state_counters -type state_config -type machine_tables -type dedup_bucket -type frame_counters -type frame_config flowstate flowstate.c
