"""The cluster mode's SQL store: MySQL / TiDB (MariaDB in dev and CI) through pymysql
(:mod:`.store`)."""
