/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_LOG_H
#define OFX_LOG_H

#include <errno.h>
#include <stdbool.h>

/*
 * One logging family for the whole provider.  The level comes from
 * DAPL_OFX_LOG_LEVEL (error|warn|info|debug|trace), the subsystem filter
 * from DAPL_OFX_LOG_SUBSYS (comma list, default all) and the sink from
 * DAPL_OFX_LOG_FILE (default stderr); all are read once by ofx_log_init().
 *
 * A source file selects its subsystem by defining OFX_LOG_SUBSYS before
 * including this header.  The macros test the level before formatting and
 * preserve errno so that "%m" and a following `ret = -errno` both work.
 */
enum ofx_log_level {
	OFX_LOG_ERROR,
	OFX_LOG_WARN,
	OFX_LOG_INFO,
	OFX_LOG_DEBUG,
	OFX_LOG_TRACE,
};

#define OFX_LOG_SUBSYSTEMS(X) \
	X(CORE, "core")       \
	X(CFG, "cfg")         \
	X(IA, "ia")           \
	X(EVD, "evd")         \
	X(EP, "ep")           \
	X(CM, "cm")           \
	X(DTO, "dto")         \
	X(MEM, "mem")         \
	X(P2P, "p2p")         \
	X(XRC, "xrc")

enum ofx_log_subsys {
#define OFX_SUBSYS_ENUM(name, str) OFX_SUBSYS_##name,
	OFX_LOG_SUBSYSTEMS(OFX_SUBSYS_ENUM)
#undef OFX_SUBSYS_ENUM
	OFX_SUBSYS_COUNT
};

#ifndef OFX_LOG_SUBSYS
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#endif

extern enum ofx_log_level ofx_log_level;
extern unsigned int ofx_log_subsys_mask;

/* Reads the DAPL_OFX_LOG_* variables; idempotent. */
void ofx_log_init(void);
/* Closes a DAPL_OFX_LOG_FILE sink (called from the last dat_provider_fini). */
void ofx_log_fini(void);
/* Parses a level name; returns -EINVAL for an unknown name. */
int ofx_log_level_parse(const char *name, enum ofx_log_level *level_p);
const char *ofx_log_level_str(enum ofx_log_level level);

void ofx_log_write(enum ofx_log_level level, enum ofx_log_subsys subsys,
		   const char *func, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6), cold));

static inline bool ofx_log_enabled(enum ofx_log_level level, enum ofx_log_subsys subsys)
{
	return level <= ofx_log_level && (ofx_log_subsys_mask & (1u << subsys));
}

#define ofx_log(level, fmt, ...)                                                 \
	do {                                                                     \
		if (ofx_log_enabled(level, OFX_LOG_SUBSYS)) {                    \
			int ofx_saved_errno_ = errno;                            \
			ofx_log_write(level, OFX_LOG_SUBSYS, __func__, __LINE__, \
				      fmt, ##__VA_ARGS__);                       \
			errno = ofx_saved_errno_;                                \
		}                                                                \
	} while (0)

#define ofx_err(fmt, ...) ofx_log(OFX_LOG_ERROR, fmt, ##__VA_ARGS__)
#define ofx_warn(fmt, ...) ofx_log(OFX_LOG_WARN, fmt, ##__VA_ARGS__)
#define ofx_info(fmt, ...) ofx_log(OFX_LOG_INFO, fmt, ##__VA_ARGS__)
#define ofx_dbg(fmt, ...) ofx_log(OFX_LOG_DEBUG, fmt, ##__VA_ARGS__)

/* Data-path tracing: compiled out unless configured with --enable-debug. */
#ifdef OFX_DEBUG
#define ofx_dbg_data(fmt, ...) ofx_log(OFX_LOG_TRACE, fmt, ##__VA_ARGS__)
#else
#define ofx_dbg_data(fmt, ...) do { } while (0)
#endif

/* Logs a repeating condition once per process. */
#define ofx_warn_once(fmt, ...)                       \
	do {                                          \
		static bool ofx_warned_;              \
		if (!ofx_warned_) {                   \
			ofx_warned_ = true;           \
			ofx_warn(fmt, ##__VA_ARGS__); \
		}                                     \
	} while (0)

#endif
