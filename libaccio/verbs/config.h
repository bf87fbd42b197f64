/* SPDX-License-Identifier: MIT */
/*
 * The build settings rdma-core's headers (libibverbs/driver.h, ccan/,
 * util/) read from its generated config.h, for a provider compiled outside
 * rdma-core's cmake build. The values are those of Debian's build of
 * libibverbs; IBVERBS_PABI_VERSION comes from the Makefile (the private ABI
 * the sysroot's libibverbs.so.1 exports).
 */
#ifndef ACCIO_VERBS_CONFIG_H
#define ACCIO_VERBS_CONFIG_H

#define HAVE_STATEMENT_EXPR 1
#define HAVE_BUILTIN_TYPES_COMPATIBLE_P 1
#define HAVE_TYPEOF 1
#define HAVE_ISBLANK 1
#define HAVE_BUILTIN_CLZ 1
#define HAVE_BUILTIN_CLZL 1
#define HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1
#define HAVE_FUNC_ATTRIBUTE_SYMVER 1

#define STREAM_CLOEXEC "e"
#define RDMA_CDEV_DIR "/dev/infiniband"
#define IBV_CONFIG_DIR "/etc/libibverbs.d"
#define VERBS_PROVIDER_DIR "/usr/lib/riscv64-linux-gnu/libibverbs"

#ifndef IBVERBS_PABI_VERSION
#error "IBVERBS_PABI_VERSION: the private ABI of the libibverbs this provider is for"
#endif
#define VERBS_PROVIDER_SUFFIX "-rdmav" ACCIO_STR(IBVERBS_PABI_VERSION) ".so"
#define ACCIO_STR(x) ACCIO_STR_1(x)
#define ACCIO_STR_1(x) #x

#if __SIZEOF_LONG__ == 8
#define SIZEOF_LONG 8
#else
#define SIZEOF_LONG 4
#endif

/* the kernel interface: ioctl where the kernel has it, write otherwise */
#define VERBS_IOCTL_ONLY 0
#define VERBS_WRITE_ONLY 0

#endif
