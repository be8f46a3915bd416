# Sourced by the ncu cross-check scripts: ncu over one verify-only worker
# job (the checked calls of one kernel: its trials, the alt scalars, the
# operator's distributions), kernel replay with the caches and clocks left
# alone, mangled names, a raw CSV. Needs B (the build) and NCU.
#   ncu_job PLUGIN KERNEL OP DTYPE EXTENTS METRICS CSV ERRFILE   -> ncu's status
ncu_job() {
    printf '{"proto":"kgate.worker/2","mode":"kernel","plugin":"%s","kernel":"%s","op":"%s","dtype":"%s","shape":[%s],"trials":1,"edge":false,"verify_only":true,"nonce":"x"}' \
        "$1" "$2" "$3" "$4" "$5" |
        "$NCU" --csv --page raw --clock-control none --cache-control none --replay-mode kernel \
            --kernel-name-base mangled --metrics "$6" --disable-extra-suffixes \
            --log-file "$7" "$B/kgate" __worker --fd 3 3>/dev/null >/dev/null 2>"$8"
}
