module tj
go 1.26
