atempts = 3
const fn f() {}