from clusterforge.main import main

main()
