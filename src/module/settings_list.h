/*
 * settings_list.h
 *		The modules that define their own settings, one line each.
 *
 * Each line names a module whose NAME_define_settings() defines its
 * settings (GUCs) beside the code that reads them, with their bounds and
 * check hooks; define_settings() (module/settings.c) calls them in this
 * order, so settings.c includes none of their headers.  Not guarded for
 * one inclusion: settings.c includes it twice, with SETTINGS_MODULE
 * defined as it needs.
 */
SETTINGS_MODULE(listen)
SETTINGS_MODULE(health)
SETTINGS_MODULE(timeouts)
SETTINGS_MODULE(h2_guard)
SETTINGS_MODULE(capacity)
SETTINGS_MODULE(pipeline)
SETTINGS_MODULE(route_placement)
SETTINGS_MODULE(handoff)
SETTINGS_MODULE(sse)
SETTINGS_MODULE(events)
SETTINGS_MODULE(route_stats)
SETTINGS_MODULE(compress)
SETTINGS_MODULE(replica)
SETTINGS_MODULE(tls)
SETTINGS_MODULE(tls_tickets)
SETTINGS_MODULE(access_log)
SETTINGS_MODULE(cors)
SETTINGS_MODULE(rate_limit)
SETTINGS_MODULE(static_files)
SETTINGS_MODULE(security_headers)
SETTINGS_MODULE(metrics)
SETTINGS_MODULE(jwt_keys)
SETTINGS_MODULE(auth)
SETTINGS_MODULE(jwt_secret)
SETTINGS_MODULE(ws_socket)
