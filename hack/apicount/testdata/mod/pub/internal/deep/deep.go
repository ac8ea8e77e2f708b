package deep

func Hidden() {}
