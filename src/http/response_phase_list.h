/*
 * response_phase_list.h
 *		The modules of PHASE_FILTER and PHASE_LOG on the worker's paths,
 *		one line each (serve/phase.h).
 *
 * FILTER_MODULE(NAME) names a module that defines "const FilterModule
 * NAME_filter" in its own file (libh2o's filter: each response's head and
 * body as sent); LOG_MODULE(NAME) one that defines "const LogModule
 * NAME_logger" (libh2o's logger: each request once disposed of).
 * Filters run in the order listed here, all before libh2o's chunked
 * encoder.  Included twice by http/response_phases.c, with FILTER_MODULE
 * and LOG_MODULE defined as it needs.
 */
FILTER_MODULE(security_headers)
FILTER_MODULE(compress)
LOG_MODULE(access_log)
