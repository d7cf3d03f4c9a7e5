/* placeholder */
typedef int ebb__metrics_placeholder;
