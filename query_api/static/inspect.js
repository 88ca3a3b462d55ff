// placeholder, filled in below
"use strict";
