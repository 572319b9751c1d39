package maas

// routesNetworking registers fabrics, VLANs, subnets, IP ranges, spaces,
// static routes and machine interfaces.
func (s *Server) routesNetworking() {}
