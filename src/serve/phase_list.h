/*
 * phase_list.h
 *		The pipeline's modules, one line each (serve/phase.h).
 *
 * Each line names a module that defines "const PhaseModule NAME_module"
 * in its own file: its hooks into the phases from the route match on
 * (they run on the worker's loop and on executors alike), and whether its
 * settings put it on the lists.  Within a phase, modules run in the order
 * listed here, and a module's place here is its index
 * (PHASE_MODULE_INDEX(name), serve/phase.h).  Not a header guarded for one
 * inclusion: serve/phase.h and serve/phase.c include it, with
 * PHASE_MODULE defined as each needs.
 */
PHASE_MODULE(cors)
PHASE_MODULE(rate_limit)
PHASE_MODULE(body_limit)
PHASE_MODULE(auth)
