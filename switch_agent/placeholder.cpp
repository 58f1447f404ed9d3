namespace ina {}
