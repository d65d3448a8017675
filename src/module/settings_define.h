/*
 * settings_define.h
 *		Defining webgres' settings, done once by _PG_init (settings.c).
 */
#ifndef WEBGRES_SETTINGS_DEFINE_H
#define WEBGRES_SETTINGS_DEFINE_H

extern void define_settings(void);

#endif							/* WEBGRES_SETTINGS_DEFINE_H */
