/*
 * worker_phase_list.h
 *		The worker's modules, one line each (serve/phase.h).
 *
 * The phases before the route match run on the worker alone, since they
 * need the connection: screening the request head, the endpoints answered
 * without SQL, the TLS redirect.  Each line names a module that defines
 * "const PhaseModule NAME_module" in its own file; within a phase, they
 * run in the order listed here.  Included twice by http/worker_phases.c,
 * with WORKER_MODULE defined as it needs.
 */
WORKER_MODULE(http_guard)
WORKER_MODULE(health)
WORKER_MODULE(metrics)
WORKER_MODULE(tls_redirect)
