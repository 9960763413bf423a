#!/usr/bin/env python3
"""Group the kernel samples of a `perf record -a -g` profile by subsystem.

usage: perf script -i perf.data -F comm,ip,sym | scripts/perf-fold-kernel.py [SYS_MS_PER_RUN]

A sample counts as kernel when its leaf frame is a kernel address. Each kernel
sample goes to the first rule below that matches any frame of its call chain
(rules are ordered specific-first, so a page fault inside execve counts as
exec). Idle-loop samples are reported apart and left out of the shares. With
SYS_MS_PER_RUN (sys CPU per run from /proc/stat), each share is also given in
ms per run.
"""
import re
import sys
from collections import Counter

RULES = [
    ("idle", r"^(do_idle|cpuidle_\w+|default_idle\w*|poll_idle|cpu_startup_entry|acpi_idle\w*|intel_idle\w*)$"),
    ("netns create (copy_net_ns/setup_net)", r"^(copy_net_ns|setup_net)$"),
    ("netns teardown (cleanup_net, put_net)", r"^(cleanup_net|ops_exit_list|ops_undo_list|__put_net|put_net|net_free|unregister_netdevice\w*|default_device_exit\w*)$"),
    ("expedited RCU grace periods (umount's namespace_unlock)", r"^(synchronize_rcu_expedited|sync_rcu_exp\w*|rcu_exp_\w*|wait_rcu_exp_gp|__sync_rcu_exp\w*)$"),
    ("mountinfo reads (show_mountinfo)", r"^(show_mountinfo|mountinfo_open|mounts_open_common|show_vfsmnt|show_mnt_opts)$"),
    ("bounded disk: loop attach/detach, ext4 mount/unmount", r"^(lo_\w+|loop_\w+|__loop_clr_fd|ext4_fill_super|__ext4_fill_super|ext4_get_tree|ext4_put_super|ext4_kill_sb|kill_block_super|setup_bdev_super|get_tree_bdev\w*|blkdev_\w+|bdev_\w+|bd_\w+|invalidate_bdev|sync_blockdev\w*|__x64_sys_fallocate)$"),
    ("mount ns copy (copy_mnt_ns)", r"^(copy_mnt_ns|copy_tree)$"),
    ("mount teardown (umount, put_mnt_ns, cleanup_mnt)", r"^(__x64_sys_umount|ksys_umount|path_umount|do_umount|umount_tree|put_mnt_ns|free_mnt_ns|drop_collected_mounts|namespace_unlock|cleanup_mnt|__cleanup_mnt|delayed_mntput|mntput_no_expire|deactivate_super|deactivate_locked_super|kill_litter_super|kill_anon_super|kill_block_super|generic_shutdown_super)$"),
    ("mounts (mount/pivot_root/move_mount)", r"^(__x64_sys_mount|do_mount|path_mount|do_new_mount|do_loopback|do_move_mount\w*|attach_recursive_mnt|propagate_mnt|__x64_sys_pivot_root|__do_sys_pivot_root|chroot_fs_refs|__x64_sys_open_tree|__x64_sys_move_mount|__x64_sys_fsmount|__x64_sys_fsconfig|__x64_sys_fsopen|__x64_sys_mount_setattr|do_mount_setattr|vfs_get_tree|do_remount|do_reconfigure_mnt|graft_tree)$"),
    ("cgroup mkdir/rmdir/css", r"^(cgroup_mkdir|cgroup_rmdir|cgroup_destroy_locked|css_\w+|cgroup_apply_control\w*|cgroup_attach_task|cgroup_migrate\w*|cgroup_procs_write\w*|__cgroup1_procs_write|cgroup1_\w+|cgroup_exit|cgroup_release|cgroup_free|cgroup_post_fork|cgroup_can_fork|cgroup_file_write|mem_cgroup_css_\w+|kernfs_\w+_dir\w*)$"),
    ("user ns (create/free)", r"^(create_user_ns|free_user_ns|__put_user_ns|unshare_userns)$"),
    ("pid ns (create/free, proc flush)", r"^(copy_pid_ns|create_pid_namespace|free_pid_ns|put_pid_ns|zap_pid_ns_processes|pid_ns_release_proc|proc_flush_pid)$"),
    ("ipc ns (create/free)", r"^(copy_ipcs|create_ipc_ns|free_ipc\w*|put_ipc_ns|mq_init_ns|mq_put_mnt)$"),
    ("uts/time/cgroup ns, nsproxy other", r"^(copy_utsname|clone_uts_ns|copy_cgroup_ns|copy_time_ns|create_new_namespaces|free_nsproxy|switch_task_namespaces|__x64_sys_setns|__x64_sys_unshare|ksys_unshare)$"),
    ("seccomp", r"^(seccomp_\w+|__seccomp_filter|bpf_prog_\w+|__x64_sys_seccomp|do_seccomp|bpf_prepare_filter|bpf_check)$"),
    ("landlock", r"^(landlock_\w+|hook_\w+|__x64_sys_landlock\w*)$"),
    ("exec (execve, ELF load)", r"^(__x64_sys_execve\w*|do_execve\w*|bprm_execve|exec_binprm|load_elf_binary|begin_new_exec|setup_arg_pages|copy_strings\w*)$"),
    ("process exit (exit_mmap, release_task)", r"^(do_exit|do_group_exit|__x64_sys_exit\w*|exit_mmap|mmput|release_task|exit_notify|exit_files|put_files_struct|__mmdrop|delayed_put_task_struct|wait_task_zombie)$"),
    ("fork/clone (copy_process)", r"^(copy_process|kernel_clone|__x64_sys_clone\w*|__do_sys_clone\w*|dup_mm|dup_mmap|copy_page_range)$"),
    ("page faults (user)", r"^(asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault)$"),
    ("mmap/munmap/mprotect", r"^(__x64_sys_mmap|ksys_mmap_pgoff|vm_mmap_pgoff|do_mmap|__x64_sys_munmap|__vm_munmap|do_vmi_munmap|__x64_sys_mprotect|do_mprotect_pkey|__x64_sys_brk|__x64_sys_madvise)$"),
    ("ext4/block file I/O (root fs and disks)", r"^(ext4_\w+|jbd2_\w+|__jbd2\w*|submit_bio\w*|blk_mq_\w+)$"),
    ("open/stat/path lookup", r"^(do_sys_openat2|path_openat|filename_lookup|vfs_statx\w*|do_faccessat|__x64_sys_readlink\w*|__x64_sys_getdents\w*|__x64_sys_newfstatat|__x64_sys_statx|__x64_sys_close\w*|__x64_sys_mkdir\w*|__x64_sys_unlink\w*|__x64_sys_rmdir|do_rmdir|do_mkdirat|do_unlinkat)$"),
    ("read/write/pipes/poll/futex", r"^(ksys_read|ksys_write|vfs_read|vfs_write|do_iter_readv_writev|__x64_sys_readv|__x64_sys_writev|__x64_sys_pread64|__x64_sys_epoll_\w+|do_epoll_wait|__x64_sys_futex|do_futex|__x64_sys_ppoll|__x64_sys_poll|do_sys_poll|__x64_sys_select|__x64_sys_pselect6|__x64_sys_wait4|kernel_wait4|__x64_sys_waitid|__x64_sys_pipe2|__x64_sys_nanosleep|__x64_sys_clock_nanosleep|__x64_sys_sendmsg|__x64_sys_recvmsg|__x64_sys_sendto|__x64_sys_recvfrom)$"),
    ("signals/prctl/ioctl/other syscalls", r"^(__x64_sys_\w+|__ia32_sys_\w+)$"),
    ("scheduler (switch, wakeup, balance)", r"^(__schedule|schedule|schedule_idle|try_to_wake_up|finish_task_switch\w*|pick_next_task\w*|load_balance|sched_balance_\w+|newidle_balance|update_curr|enqueue_task\w*|dequeue_task\w*)$"),
    ("rcu/softirq/irq/timers", r"^(rcu_\w+|__do_softirq|handle_softirqs|irq_exit\w*|__sysvec_\w+|sysvec_\w+|asm_sysvec_\w+|common_interrupt|hrtimer_\w+|tick_\w+|run_timer_softirq|process_one_work|worker_thread)$"),
]
RULES = [(n, re.compile(p)) for n, p in RULES]


def samples(f):
    head, frames = None, []
    for line in f:
        line = line.rstrip("\n")
        if not line.strip():
            if head is not None:
                yield head, frames
            head, frames = None, []
        elif line[0] not in " \t":
            head, frames = line, []
        else:
            parts = line.split(None, 1)
            if parts:
                frames.append((parts[0], parts[1].split("+")[0].split(" (")[0] if len(parts) > 1 else "?"))
    if head is not None:
        yield head, frames


def main():
    sys_ms = float(sys.argv[1]) if len(sys.argv) > 1 else None
    cats, comms, ksyms, bycomm, unattr = Counter(), Counter(), Counter(), Counter(), Counter()
    total = user = idle = 0
    for head, frames in samples(sys.stdin):
        total += 1
        if not frames:
            continue
        try:
            leaf = int(frames[0][0], 16)
        except ValueError:
            continue
        if leaf < 0xFFFF800000000000:
            user += 1
            continue
        names = [s for _, s in frames]
        cat = "kernel, unattributed"
        for n, rx in RULES:
            if any(rx.match(s) for s in names):
                cat = n
                break
        if cat == "idle":
            idle += 1
            continue
        cats[cat] += 1
        comm = head.split()[0] if head.split() else "?"
        comms[comm] += 1
        bycomm[(cat, comm)] += 1
        if cat == "kernel, unattributed":
            unattr[" <- ".join(names[:3])] += 1
        ksyms[names[0]] += 1
    k = sum(cats.values())
    print(f"samples {total}: user {user}, kernel busy {k}, idle {idle}")
    print(f"{'subsystem':52s} {'samples':>8s} {'share':>6s}" + (f" {'ms/run':>7s}" if sys_ms else ""))
    for n, c in cats.most_common():
        print(f"{n:52s} {c:8d} {100*c/k:5.1f}%" + (f" {sys_ms*c/k:7.2f}" if sys_ms else ""))
    print("\neach subsystem's samples by task name (top 3):")
    for n, c in cats.most_common():
        top = sorted(((v, cm) for (ct, cm), v in bycomm.items() if ct == n), reverse=True)[:3]
        print(f"  {n:52s} " + ", ".join(f"{cm} {100*v/c:.0f}%" for v, cm in top))
    print("\nunattributed kernel samples, leaf frames:")
    for n, c in unattr.most_common(8):
        print(f"  {c:6d} {n}")
    print("\nkernel busy samples by task name:")
    for n, c in comms.most_common(12):
        print(f"  {n:24s} {c:8d} {100*c/k:5.1f}%")
    print("\nhottest kernel leaf symbols:")
    for n, c in ksyms.most_common(25):
        print(f"  {n:40s} {c:8d} {100*c/k:5.1f}%")


main()
