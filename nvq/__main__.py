from nvq.cli.main import main

main()
